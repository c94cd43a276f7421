"""``python -m dlsched``: the same CLI as the ``dlsched`` script."""

from dlsched.cli import main

main()
