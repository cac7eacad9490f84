SUMMARY = "devservices: the platform's device services on D-Bus"
DESCRIPTION = "One executable hosting the platform's D-Bus services (intent, power, \
file cache, test automation, ...), with its systemd units, D-Bus system policy and \
activation files, udev rules and board recipe."
LICENSE = "CLOSED"

# The executable is built outside bitbake, with Bun, which bitbake cannot run:
#   x86-64:  DEVSERVICES_TARGET=bun-linux-x64 bun run build     -> dist/devservices-x64
#   aarch64: DEVSERVICES_TARGET=bun-linux-arm64 bun run build   -> dist/devservices-arm64
# The recipe fetches dist/devservices-<arch> from DEVSERVICES_DIST (file://, so a new
# build changes the task checksums) and installs it as it is.
# DEVSERVICES_SRC: the source tree (default: the one this layer is in).
DEVSERVICES_LAYER_TOP := "${@os.path.normpath(os.path.join(d.getVar('THISDIR'), '../../..'))}"
DEVSERVICES_SRC ??= "${DEVSERVICES_LAYER_TOP}"
DEVSERVICES_DIST ??= "${DEVSERVICES_SRC}/dist"
DEVSERVICES_ARCH = "unsupported"
DEVSERVICES_ARCH:x86-64 = "x64"
DEVSERVICES_ARCH:aarch64 = "arm64"
# Bun builds for 64-bit x86 and ARM only.
COMPATIBLE_HOST = "(x86_64|aarch64).*-linux"

# The board recipe (recipes/boards/<name>.json in DEVSERVICES_SRC) chosen by MACHINE:
# DEVSERVICES_BOARD_MAP[<machine>] = "<board>", else "virtual". Set DEVSERVICES_BOARD
# to choose one directly.
DEVSERVICES_BOARD_MAP[raspberrypi4-64] = "rpi4"
DEVSERVICES_BOARD ??= "${@d.getVarFlag('DEVSERVICES_BOARD_MAP', d.getVar('MACHINE')) or 'virtual'}"
DEVSERVICES_BOARD_FILE = "${DEVSERVICES_SRC}/recipes/boards/${DEVSERVICES_BOARD}.json"
# The services the board runs (its "services" list), for the activation files and,
# with DEVSERVICES_UNITS = "per-service", the instances enabled at boot.
DEVSERVICES_SERVICES ??= "${@devservices_board_services(d)}"
DEVSERVICES_BUS_NAMES ??= "${@devservices_bus_names(d)}"
# The device nodes of the board's peripherals (its peripheralmanager section), for the
# udev rules: only these pull the peripheral manager's unit in (not the serial console,
# not unused ports).
DEVSERVICES_PERIPHERAL_NODES ??= "${@devservices_peripheral_nodes(d)}"

# "all-in-one": devservices.service hosts every service of the board in one process
# (the default: meta-devservices/README.md, "Units"). "per-service": one
# devservices@NAME.service per service.
DEVSERVICES_UNITS ??= "all-in-one"

FILESEXTRAPATHS:prepend = "${DEVSERVICES_DIST}:${DEVSERVICES_SRC}/recipes/boards:"
SRC_URI = " \
    file://devservices-${DEVSERVICES_ARCH} \
    file://${DEVSERVICES_BOARD}.json \
    file://systemd/ \
    file://dbus/ \
    file://udev/70-devservices.rules \
    file://polkit/50-devservices.rules \
    file://tmpfiles/devservices.conf \
    file://etc/devservices.env \
"
S = "${WORKDIR}"

inherit features_check systemd useradd
REQUIRED_DISTRO_FEATURES = "systemd"

def devservices_board(d):
    import json
    path = d.getVar('DEVSERVICES_BOARD_FILE')
    bb.parse.mark_dependency(d, path)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}

def devservices_board_services(d):
    return ' '.join(devservices_board(d).get('services', []))

# "<service>=<bus name>" per bus name of the board's services, for the activation files:
# com.vendor.service.<short name>, except the recording pipeline, which owns
# com.vendor.pipeline.record.<id> for each id of the board's record.pipelines.
def devservices_bus_names(d):
    board = devservices_board(d)
    out = []
    for service in board.get('services', []):
        if service == 'record':
            out += ['record=com.vendor.pipeline.record.%s' % i for i in board.get('record', {}).get('pipelines', [])]
        else:
            out.append('%s=com.vendor.service.%s' % (service, service))
    return ' '.join(out)

# The nodes the board's peripheral manager opens: /dev/ttyS1 -> ttyS1, /dev/i2c-0 ->
# i2c-0, /dev/spidev0.0 -> spidev0.0, /dev/serial0 (a link) -> serial0.
def devservices_peripheral_nodes(d):
    board = devservices_board(d)
    pm = board.get('peripheralmanager', {})
    nodes = []
    for kind in ('uart', 'i2c', 'spi'):
        for entry in pm.get(kind, {}).values():
            dev = entry.get('device', '')
            if dev.startswith('/dev/'):
                nodes.append('%s:%s' % (kind, dev[len('/dev/'):]))
    return ' '.join(nodes)

python () {
    # Say what is missing instead of failing the whole parse in the fetcher.
    import os
    binary = os.path.join(d.getVar('DEVSERVICES_DIST'), 'devservices-' + d.getVar('DEVSERVICES_ARCH'))
    board = d.getVar('DEVSERVICES_BOARD_FILE')
    for f in (binary, board):
        bb.parse.mark_dependency(d, f)
    if d.getVar('DEVSERVICES_ARCH') == 'unsupported':
        return  # COMPATIBLE_HOST skips the recipe
    if not os.path.exists(binary):
        raise bb.parse.SkipRecipe("no prebuilt executable %s: build it in %s with "
            "DEVSERVICES_TARGET=bun-linux-%s bun run build, or set DEVSERVICES_DIST"
            % (binary, d.getVar('DEVSERVICES_SRC'), d.getVar('DEVSERVICES_ARCH')))
    if not os.path.exists(board):
        raise bb.parse.SkipRecipe("no board recipe %s for MACHINE %s: add it, or set DEVSERVICES_BOARD"
            % (board, d.getVar('MACHINE')))
    if d.getVar('DEVSERVICES_UNITS') not in ('all-in-one', 'per-service'):
        bb.fatal('DEVSERVICES_UNITS must be "all-in-one" or "per-service"')
    if d.getVar('DEVSERVICES_UNITS') == 'per-service':
        d.setVar('SYSTEMD_SERVICE:' + d.getVar('PN'),
                 ' '.join('devservices@%s.service' % s for s in d.getVar('DEVSERVICES_SERVICES').split()))
}

# The service user and its groups. Callers' groups (D-Bus policy and the services'
# own checks, docs/security.md): devservices-net (nettools sethostname/createVlan/
# deleteVlan), devservices-media (videooutput, media database grants),
# devservices-gpio/-i2c/-spi/-uart (peripheralmanager), devservices-power (reboot,
# shutdown, power off), devservices-camera (camera open), devservices-record
# (recordings), devservices-cache (file cache types), devservices-test (test
# automation events).
# Device groups (udev rules; the units add them with SupplementaryGroups=): gpio, i2c,
# spi, plus base-passwd's video and dialout. The user is a member of none of them in
# /etc/group, so each unit holds only the groups it names.
USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "--system devservices; --system devservices-net; --system devservices-media; \
    --system devservices-gpio; --system devservices-i2c; --system devservices-spi; --system devservices-uart; \
    --system devservices-power; --system devservices-camera; --system devservices-record; \
    --system devservices-cache; --system devservices-test; \
    --system gpio; --system i2c; --system spi"
USERADD_PARAM:${PN} = "--system --no-create-home --home-dir /var/lib/devservices --shell /sbin/nologin \
    --gid devservices devservices"

SYSTEMD_SERVICE:${PN} = "devservices.service"
SYSTEMD_AUTO_ENABLE = "enable"

# Libraries the executable opens by soname (bun:ffi dlopen: no automatic shlib
# dependencies): GStreamer for the recording pipeline, libturbojpeg for camera captures.
RDEPENDS:${PN} = "dbus gstreamer1.0 libturbojpeg"
# The GStreamer elements of the default pipelines (docs/decisions/record.md): software
# H264 and AAC encoders, MP4 and JPEG, test sources of the virtual board. Recommended:
# x264 and libav need LICENSE_FLAGS_ACCEPTED += "commercial", and a board with hardware
# encoders names its own in its board recipe.
RRECOMMENDS:${PN} = "gstreamer1.0-plugins-base-app gstreamer1.0-plugins-base-videotestsrc \
    gstreamer1.0-plugins-base-audiotestsrc gstreamer1.0-plugins-base-videoconvertscale \
    gstreamer1.0-plugins-base-audioconvert gstreamer1.0-plugins-good-isomp4 gstreamer1.0-plugins-good-jpeg \
    gstreamer1.0-plugins-good-audioparsers gstreamer1.0-plugins-bad-videoparsersbad \
    gstreamer1.0-plugins-ugly-x264 gstreamer1.0-libav"

# The Bun runtime and the application bundle are one file: stripping it removes the
# bundle, and there are no debug symbols to split off.
INHIBIT_PACKAGE_STRIP = "1"
INHIBIT_PACKAGE_DEBUG_SPLIT = "1"

do_configure[noexec] = "1"
do_compile[noexec] = "1"

do_install() {
    install -d ${D}${bindir}
    install -m 0755 ${WORKDIR}/devservices-${DEVSERVICES_ARCH} ${D}${bindir}/devservices

    if [ "${DEVSERVICES_UNITS}" = "per-service" ]; then
        peripheral_unit=devservices@peripheralmanager.service
        camera_unit=devservices@camera2.service
    else
        peripheral_unit=devservices.service
        camera_unit=devservices.service
    fi

    # systemd units and the per-service drop-ins
    install -d ${D}${systemd_system_unitdir}
    install -m 0644 ${WORKDIR}/systemd/devservices.service ${WORKDIR}/systemd/devservices@.service \
        ${D}${systemd_system_unitdir}/
    for dropin in ${WORKDIR}/systemd/devservices@*.service.d; do
        name=$(basename $dropin)
        install -d ${D}${systemd_system_unitdir}/$name
        install -m 0644 $dropin/devservices.conf ${D}${systemd_system_unitdir}/$name/
    done

    # D-Bus system policy: one file per bus name (prefix)
    install -d ${D}${datadir}/dbus-1/system.d
    install -m 0644 ${WORKDIR}/dbus/*.conf ${D}${datadir}/dbus-1/system.d/

    # D-Bus activation: a call to a service of the board starts the unit hosting it
    install -d ${D}${datadir}/dbus-1/system-services
    for entry in ${DEVSERVICES_BUS_NAMES}; do
        service=${entry%%=*}
        busname=${entry#*=}
        if [ "${DEVSERVICES_UNITS}" = "per-service" ]; then unit=devservices@$service.service; else unit=devservices.service; fi
        sed -e "s/@BUSNAME@/$busname/" -e "s/@UNIT@/$unit/" \
            ${WORKDIR}/dbus/activation.service.in > ${D}${datadir}/dbus-1/system-services/$busname.service
        chmod 0644 ${D}${datadir}/dbus-1/system-services/$busname.service
    done

    # udev: device groups, and the unit to start when a peripheral or camera appears;
    # the board's own I2C, SPI and UART nodes pull the peripheral manager's unit in
    install -d ${D}${nonarch_base_libdir}/udev/rules.d
    : > ${WORKDIR}/peripheral-nodes.rules
    for entry in ${DEVSERVICES_PERIPHERAL_NODES}; do
        kind=${entry%%:*}
        node=${entry#*:}
        case $kind in uart) subsystem=tty ;; i2c) subsystem=i2c-dev ;; spi) subsystem=spidev ;; esac
        case $node in
            */*) continue ;;
            tty*|i2c-*|spidev*) match="KERNEL==\"$node\"" ;;
            *) match="SYMLINK==\"$node\"" ;;
        esac
        echo "SUBSYSTEM==\"$subsystem\", $match, TAG+=\"systemd\", ENV{SYSTEMD_WANTS}+=\"$peripheral_unit\"" >> ${WORKDIR}/peripheral-nodes.rules
    done
    sed -e "s/@PERIPHERAL_UNIT@/$peripheral_unit/g" -e "s/@CAMERA_UNIT@/$camera_unit/g" \
        -e "/@PERIPHERAL_NODES@/{r ${WORKDIR}/peripheral-nodes.rules" -e "d}" \
        ${WORKDIR}/udev/70-devservices.rules > ${D}${nonarch_base_libdir}/udev/rules.d/70-devservices.rules
    chmod 0644 ${D}${nonarch_base_libdir}/udev/rules.d/70-devservices.rules

    # the media directory (recordings, captures)
    install -d ${D}${nonarch_libdir}/tmpfiles.d
    install -m 0644 ${WORKDIR}/tmpfiles/devservices.conf ${D}${nonarch_libdir}/tmpfiles.d/

    # polkit: the host name through systemd-hostnamed for the service user (nettools)
    install -d ${D}${datadir}/polkit-1/rules.d
    install -m 0644 ${WORKDIR}/polkit/50-devservices.rules ${D}${datadir}/polkit-1/rules.d/

    # configuration (/etc/devservices) and the board recipe; state is /var/lib/devservices
    # (StateDirectory= of the units), so /usr stays read-only
    install -d ${D}${sysconfdir}/devservices/boards
    sed -e "s/@BOARD@/${DEVSERVICES_BOARD}/" ${WORKDIR}/etc/devservices.env > ${D}${sysconfdir}/devservices/devservices.env
    chmod 0644 ${D}${sysconfdir}/devservices/devservices.env
    install -d ${D}${datadir}/devservices/boards ${D}${datadir}/devservices/applications
    install -m 0644 ${WORKDIR}/${DEVSERVICES_BOARD}.json ${D}${datadir}/devservices/boards/
}

FILES:${PN} += " \
    ${systemd_system_unitdir} \
    ${datadir}/dbus-1/system.d \
    ${datadir}/dbus-1/system-services \
    ${nonarch_base_libdir}/udev/rules.d \
    ${nonarch_libdir}/tmpfiles.d \
    ${datadir}/polkit-1/rules.d \
    ${sysconfdir}/devservices \
    ${datadir}/devservices \
"
CONFFILES:${PN} = "${sysconfdir}/devservices/devservices.env"
