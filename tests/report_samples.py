"""Hand-made findings and results for the gate and report tests."""

from __future__ import annotations

from ocr_hook.findings import Category, Finding, Severity, fingerprint
from ocr_hook.outcome import FileCoverage, ReviewResult, Usage
from ocr_hook.reports import ReportContext

# Model text that tries everything: workflow commands, escaped newlines, terminal escapes (SGR, OSC
# title, 8-bit CSI), JSON-breaking quotes, HTML, bidi override, legacy ##[ commands.
HOSTILE = (
    'Looks fine "}]} ::error::pwned\n'
    "::error file=x.py,line=1::injected\n"
    "  ::add-mask::secret\n"
    "%0A::warning::encoded\r\n"
    "\x1b[31mred\x1b[0m and \x1b]0;evil title\x07 and \x9b2J cleared\n"
    "</script><script>alert(1)</script> & <b>bold</b>\n"
    "##[error]legacy command\n"
    "bidi \u202eevil\u202c tab\tend"
)

FILE_TEXTS = {
    "src/app.py": "import os\n\ndef run(cmd):\n    os.system(cmd)\n    return 0\n\n\ndef main():\n    run('ls')\n",
    "src/util.py": "def add(a, b):\n    return a - b\n",
    "docs/read me.md": "# Title\n\nText\n",
}


def finding(
    path: str = "src/app.py",
    start: int = 4,
    end: int | None = None,
    severity: str = "high",
    category: str = "bug",
    message: str = "Shell command built from input",
    suggestion: str | None = None,
    anchored: bool = True,
    existing: str = "",
    suppressed: str | None = None,
    anchor_note: str | None = None,
) -> Finding:
    if not anchored:
        start, end = 0, 0
    return Finding(
        path=path,
        start_line=start,
        end_line=start if end is None else end,
        severity=Severity(severity),
        category=Category(category),
        message=message,
        suggestion=suggestion,
        anchored=anchored,
        fingerprint=fingerprint(path, category, existing or f"{path}:{start}:{message}", message),
        existing_code=existing,
        suppressed=suppressed,
        anchor_note=anchor_note,
    )


def reviewed(*paths: str) -> list[FileCoverage]:
    return [FileCoverage(p, "reviewed") for p in paths]


def result(findings: list[Finding] | None = None, files: list[FileCoverage] | None = None,
           **kwargs: object) -> ReviewResult:
    return ReviewResult(
        findings=list(findings or []),
        files=files if files is not None else reviewed("src/app.py", "src/util.py"),
        usage=Usage(requests=7, input_tokens=12_345, output_tokens=678, cache_creation_input_tokens=1000,
                    cache_read_input_tokens=5000, cost_usd=0.0421),
        elapsed_s=12.5,
        **kwargs,  # type: ignore[arg-type]
    )


def rich_result() -> ReviewResult:
    """Every kind of finding and file outcome at once."""
    return result(
        findings=[
            finding(start=4, severity="critical", category="security", message="Command injection via cmd",
                    suggestion="    subprocess.run(cmd, shell=False, check=True)", existing="os.system(cmd)"),
            finding(path="src/util.py", start=2, severity="high", category="bug", message="Subtracts instead of adds",
                    suggestion="    return a + b", existing="return a - b"),
            finding(path="src/util.py", start=1, end=2, severity="medium", category="maintainability",
                    message="No docstring", existing="def add(a, b):"),
            finding(path="src/app.py", severity="low", category="style", message="Whole-file remark",
                    anchored=False, anchor_note="quoted code not found"),
            finding(path="docs/read me.md", start=3, severity="low", category="documentation",
                    message="Vague text", suppressed="baseline"),
            finding(path="src/app.py", start=9, severity="medium", category="security", message="Hard-coded command",
                    suppressed="inline"),
        ],
        files=[
            *reviewed("src/app.py", "src/util.py"),
            FileCoverage("docs/read me.md", "cached"),
            FileCoverage("assets/logo.png", "skipped", "binary file"),
            FileCoverage("gen/huge.py", "skipped", "file too large (9000 lines > 5000)", incomplete=True),
            FileCoverage("src/net.py", "failed", "API error: 529 overloaded"),
        ],
        notes=["budget: 80% of max_cost used"],
        dropped={"filter_mode": 2, "review_filter": 1},
    )


def ctx(**kwargs: object) -> ReportContext:
    base: dict[str, object] = {"repo_root": "/tmp/repo", "tool_version": "0.1.0", "file_texts": FILE_TEXTS}
    base.update(kwargs)
    return ReportContext(**base)  # type: ignore[arg-type]
