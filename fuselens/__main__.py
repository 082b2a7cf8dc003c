"""`python -m fuselens [COMMAND ...]`: the same entry as the `fuselens` console script."""

import sys

from fuselens.main import main

sys.exit(main())
