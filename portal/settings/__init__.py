"""Settings for the GPU Golden Path Portal, read from the environment (DJANGO_SETTINGS_MODULE=portal.settings).

One module per concern; what each environment variable means is written once, in portal/configuration_meanings.py,
and docs/configuration.md is generated from it and from the code that reads the variables
(`python -m portal.configuration_docs --write`)."""
from .base import *  # noqa: F401,F403
