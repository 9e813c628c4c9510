"""Settings for the GPU Golden Path Portal, read from the environment (DJANGO_SETTINGS_MODULE=portal.settings).

One module per concern, each read by Django through this package. What each environment variable means is written
once, in portal/configuration_meanings.py; docs/configuration.md is generated from it and from the code that reads
the variables (`python -m portal.configuration_docs --write`)."""
from .base import *  # noqa: F401,F403
from .database import *  # noqa: F401,F403
from .api import *  # noqa: F401,F403
from .security import *  # noqa: F401,F403
from .identity import *  # noqa: F401,F403
from .kubernetes import *  # noqa: F401,F403
from .background import *  # noqa: F401,F403
from .notifications import *  # noqa: F401,F403
from .chargeback import *  # noqa: F401,F403
from .operations import *  # noqa: F401,F403
from .backstage import *  # noqa: F401,F403
