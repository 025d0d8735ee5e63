"""``python -m reportgen`` and the ``reportgen`` command: the command line (reportgen.cli), with
a Ctrl-C while its modules are still loading told in one line (exit 130), as one while it runs
is, not as a traceback out of an import."""

import sys


def run() -> None:
    try:
        from reportgen.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("reportgen: interrupted\n")
        raise SystemExit(130) from None
    main()


if __name__ == "__main__":
    run()
