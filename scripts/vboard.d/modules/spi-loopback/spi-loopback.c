// SPDX-License-Identifier: GPL-2.0
/*
 * A software SPI controller whose transfers loop TX back to RX, with a spidev
 * device on chip select 0: /dev/spidev0.0 without SPI hardware.
 */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/spi/spi.h>
#include <linux/string.h>

static struct platform_device *pdev;
static struct spi_controller *ctlr;
static struct spi_device *spidev;

static int loopback_transfer_one(struct spi_controller *c, struct spi_device *spi,
				 struct spi_transfer *t)
{
	if (t->rx_buf) {
		if (t->tx_buf)
			memcpy(t->rx_buf, t->tx_buf, t->len);
		else
			memset(t->rx_buf, 0, t->len);
	}
	return 0; /* finished synchronously */
}

static int __init loopback_init(void)
{
	int ret;

	pdev = platform_device_register_simple("spi-loopback", -1, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	ctlr = spi_alloc_master(&pdev->dev, 0);
	if (!ctlr) {
		ret = -ENOMEM;
		goto err_pdev;
	}
	ctlr->bus_num = 0;
	ctlr->num_chipselect = 1;
	ctlr->mode_bits = SPI_CPHA | SPI_CPOL | SPI_CS_HIGH | SPI_LSB_FIRST | SPI_LOOP;
	ctlr->bits_per_word_mask = SPI_BPW_RANGE_MASK(1, 32);
	ctlr->max_speed_hz = 100000000;
	ctlr->transfer_one = loopback_transfer_one;
	ret = spi_register_controller(ctlr);
	if (ret) {
		spi_controller_put(ctlr);
		goto err_pdev;
	}
	spidev = spi_alloc_device(ctlr);
	if (!spidev) {
		ret = -ENOMEM;
		goto err_ctlr;
	}
	spidev->chip_select = 0;
	spidev->max_speed_hz = 1000000;
	spidev->bits_per_word = 8;
	strscpy(spidev->modalias, "spidev", sizeof(spidev->modalias));
	/* spidev matches no generic name: bind it explicitly. */
	spidev->driver_override = kstrdup("spidev", GFP_KERNEL);
	ret = spi_add_device(spidev);
	if (ret) {
		spi_dev_put(spidev);
		goto err_ctlr;
	}
	return 0;

err_ctlr:
	spi_unregister_controller(ctlr);
err_pdev:
	platform_device_unregister(pdev);
	return ret;
}

static void __exit loopback_exit(void)
{
	spi_unregister_device(spidev);
	spi_unregister_controller(ctlr);
	platform_device_unregister(pdev);
}

module_init(loopback_init);
module_exit(loopback_exit);
MODULE_DESCRIPTION("SPI controller looping TX back to RX, with a spidev on CS0");
MODULE_LICENSE("GPL");
