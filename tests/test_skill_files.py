"""Issue 58 item 25: the delegate skill's files. Two agents, each reviewing its own repository by the skill's
own shell lines (taken from SKILL.md, run by bash with one shared TMPDIR; `delegate start` by the real CLI),
each read back their own session, never the other's; and the verdict file is theirs alone too. With the fixed
`${TMPDIR:-/tmp}/ocr-hook-session.json` the second start overwrote the first agent's briefs."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from gitrepo import commit_all, git, make_repo, run_cli, write

SKILL = Path(__file__).resolve().parents[1] / "skills" / "ocr-hook-review" / "SKILL.md"


def skill_line(pattern: str) -> str:
    """The one shell line of the skill's bash blocks that matches `pattern`."""
    blocks = re.findall(r"```bash\n(.*?)```", SKILL.read_text(encoding="utf-8"), re.S)
    found = [line for block in blocks for line in block.splitlines() if re.match(pattern, line)]
    assert len(found) == 1, found
    return found[0]


def agent_shell(repo: Path, script: str, env: dict[str, str]) -> str:
    proc = subprocess.run(["bash", "-ec", script], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_two_agents_following_the_skill_never_read_each_others_files(tmp_path: Path) -> None:
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(shared_tmp)}
    session_line, start_line = skill_line(r"S="), skill_line(r"ocr-hook delegate start > ")
    finish_line = skill_line(r"ocr-hook delegate finish SESSION --format json > ")
    verdict_target = re.search(r'> ("[^"]+")', finish_line).group(1)  # type: ignore[union-attr]
    set_verdict = [skill_line(r"V=")] if "$V" in verdict_target else []
    repos = {}
    for name in ("alpha", "beta"):
        repo = make_repo(tmp_path / name)
        write(repo, "base.py", "x = 1\n")
        commit_all(repo, "base")
        write(repo, f"{name}_module.py", f"def {name}(value):\n    return eval(value)\n")
        git(repo, "add", ".")
        repos[name] = repo
    assert start_line.startswith('ocr-hook delegate start > "$S"'), start_line
    for repo in repos.values():  # alpha starts, then beta, into the file the skill's first line names
        session_file = agent_shell(repo, f'{session_line}\necho "$S"\n', env).strip()
        started = run_cli(repo, "delegate", "start", env=env)  # (a forked CLI: the skill's `>` is this write)
        assert started.returncode == 0, started.stderr
        Path(session_file).write_text(started.stdout, encoding="utf-8")
    for name, repo in repos.items():  # each agent reads its session back, in a new shell, as the skill says
        started = json.loads(agent_shell(repo, f'{session_line}\ncat "$S"\n', env))
        assert [f["path"] for f in started["files"]] == [f"{name}_module.py"], (name, started["files"])
    # The verdict file: named per repository as well, nowhere in the shared temporary directory.
    where = {name: agent_shell(repo, "\n".join([*set_verdict, f"echo {verdict_target}"]), env).strip()
             for name, repo in repos.items()}
    assert where["alpha"] != where["beta"] and not any(w.startswith(str(shared_tmp)) for w in where.values()), where
    assert list(shared_tmp.iterdir()) == []
