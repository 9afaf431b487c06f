import sys

from mfscore.cli.main import main

sys.exit(main())
