"""The ``reportgen`` command line. Each command parses options and calls one plain function.

Exit codes shared by every command: 0 success, 1 the input is invalid (or, for ``--fail-on``,
the disposition is one the caller refuses), 2 usage error (bad option, missing file).
"""

from __future__ import annotations

import sys

import click

from reportgen import __version__

VALIDATE_HELP = """Check run logs (events.jsonl) against the event contract.

Every problem is printed as FILE:LINE: severity: message. A log with only warnings (a newer
minor schema, no run_end, a truncated last line) is valid; the report will call it incomplete.

\b
Exit codes: 0 every log valid, 1 some log invalid, 2 usage error.
\b
Example:
  reportgen validate runs/*/events.jsonl
  reportgen validate --json events.jsonl | jq '.[0].problems'
"""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reportgen")
def main() -> None:
    """Turn collector run logs into migration reports with one disposition.

    Run `reportgen COMMAND --help` for each command's options.
    """


@main.command(help=VALIDATE_HELP)
@click.argument("logs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON for machines.")
@click.option(
    "--max-problems",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Problems printed per file; 0 prints all.",
)
def validate(logs: tuple[str, ...], as_json: bool, max_problems: int) -> None:
    from reportgen.validation import validate_files

    text, code = validate_files(list(logs), as_json=as_json, max_problems=max_problems)
    click.echo(text)
    sys.exit(code)
