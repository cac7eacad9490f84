// Every test validates responses against their schemas and logs quietly.
process.env.DEVSERVICES_CHECK_RESPONSES = "1";
process.env.DEVSERVICES_LOG_LEVEL ??= "silent";
