SUMMARY = "devservices: the device services of the platform (intent, power, file cache, test automation, ...)"
DESCRIPTION = "One executable hosting the platform's D-Bus services, with systemd units, \
D-Bus policy, udev rules and board recipes."
LICENSE = "CLOSED"

# The executable is built outside bitbake with Bun (`bun run build`, or
# `DEVSERVICES_TARGET=bun-linux-arm64 bun run build` for an arm64 board) and handed
# to the recipe: point DEVSERVICES_DIST at the directory holding `devservices`, and
# DEVSERVICES_SRC at the source tree (for the board recipes).
DEVSERVICES_SRC ??= "${THISDIR}/../../.."
DEVSERVICES_DIST ??= "${DEVSERVICES_SRC}/dist"
DEVSERVICES_BOARD ??= "virtual"

SRC_URI = " \
    file://devservices.service \
    file://devservices@.service \
    file://devservices.conf \
    file://70-devservices.rules \
    file://devservices.default \
"
S = "${WORKDIR}"

inherit systemd useradd

USERADD_PACKAGES = "${PN}"
GROUPADD_PARAM:${PN} = "--system devservices; --system gpio; --system i2c; --system spi"
USERADD_PARAM:${PN} = "--system --no-create-home --home-dir /var/lib/devservices --shell /sbin/nologin \
    --gid devservices --groups gpio,i2c,spi,video,dialout devservices"

SYSTEMD_SERVICE:${PN} = "devservices.service"
SYSTEMD_AUTO_ENABLE = "enable"

RDEPENDS:${PN} = "dbus glibc"
# The Bun runtime is linked into the executable; do not strip or split it.
INHIBIT_PACKAGE_STRIP = "1"
INHIBIT_PACKAGE_DEBUG_SPLIT = "1"
INSANE_SKIP:${PN} += "already-stripped ldflags textrel"

do_install() {
    install -d ${D}${bindir}
    install -m 0755 ${DEVSERVICES_DIST}/devservices ${D}${bindir}/devservices

    install -d ${D}${systemd_system_unitdir}
    install -m 0644 ${WORKDIR}/devservices.service ${D}${systemd_system_unitdir}/
    install -m 0644 ${WORKDIR}/devservices@.service ${D}${systemd_system_unitdir}/

    install -d ${D}${datadir}/dbus-1/system.d
    install -m 0644 ${WORKDIR}/devservices.conf ${D}${datadir}/dbus-1/system.d/devservices.conf

    install -d ${D}${nonarch_base_libdir}/udev/rules.d
    install -m 0644 ${WORKDIR}/70-devservices.rules ${D}${nonarch_base_libdir}/udev/rules.d/

    install -d ${D}${sysconfdir}/default
    install -m 0644 ${WORKDIR}/devservices.default ${D}${sysconfdir}/default/devservices
    sed -i -e 's/@BOARD@/${DEVSERVICES_BOARD}/' ${D}${sysconfdir}/default/devservices

    install -d ${D}${datadir}/devservices/boards ${D}${datadir}/devservices/applications
    install -m 0644 ${DEVSERVICES_SRC}/recipes/boards/*.json ${D}${datadir}/devservices/boards/
}

FILES:${PN} += "${systemd_system_unitdir} ${datadir}/dbus-1 ${nonarch_base_libdir}/udev ${datadir}/devservices"
