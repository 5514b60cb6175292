"""A screenshot of "Edit a merge…" in the combined review: two candidates changed the same lines of app.py, both
hunks are ticked, their overlap is shown side by side, and the merge box beside it starts from both hunks' text,
edited into one.

    xvfb-run -a -s "-screen 0 1280x720x24" .venv/bin/python scripts/screenshot_merge.py --platform xcb [--out docs/screens]

The two candidates' proposals are change sets made directly (no model runs): nothing is written to the folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BASE = "".join(f"line {n}\n" for n in range(1, 13))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="xcb", help="xcb (under Xvfb, the default) or offscreen")
    parser.add_argument("--out", default=str(ROOT / "docs" / "screens"))
    args = parser.parse_args()
    os.environ["QT_QPA_PLATFORM"] = args.platform
    from PySide6.QtGui import QPainter, QPixmap
    from PySide6.QtWidgets import QApplication

    from ui.review.combined import CombinedReview
    from ui.tasks import TaskOwner
    from ui.theme import apply_theme
    from workspace.changes import ChangeSet
    from workspace.session.compare import CandidateResult, Comparison

    app = QApplication([])
    apply_theme(app, "light")
    folder = Path(tempfile.mkdtemp(prefix="robotlab-merge-shot-")) / "project"
    folder.mkdir()
    (folder / "app.py").write_text(BASE)
    edits = {"openai/model-a": {2: "A two\n", 8: "A eight\n"}, "openai/model-b": {2: "B two\n", 10: "B ten\n"}}
    candidates = []
    for index, (label, lines) in enumerate(edits.items()):
        rows = BASE.splitlines(keepends=True)
        for number, text in lines.items():
            rows[number - 1] = text
        changes = ChangeSet(folder, mode="review")
        changes.propose("app.py", "".join(rows).encode())
        candidates.append(CandidateResult(index=index, label=label, robot="file-helper", model=label,
                                          changes=changes))
    review = CombinedReview(Comparison("shot", "Tidy up app.py", folder, candidates), tasks=TaskOwner())
    review.resize(620, 660)
    review.show()
    for hunk_id in ("c0.f1.h1", "c0.f1.h2", "c1.f1.h1"):
        review.set_accepted(hunk_id)
    overlap = review.selection.overlaps()[0]
    dialog = review.edit_merge(overlap)
    dialog.editor.setPlainText("A and B two: the better words of both\n")
    dialog.resize(560, 360)
    for _ in range(5):
        app.processEvents()
    left, right = review.grab(), dialog.grab()
    canvas = QPixmap(left.width() + right.width() + 24, max(left.height(), right.height()))
    canvas.fill(app.palette().window().color())
    painter = QPainter(canvas)
    painter.drawPixmap(0, 0, left)
    painter.drawPixmap(left.width() + 24, 0, right)
    painter.end()
    out = Path(args.out) / "compare-review-merge.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(str(out))
    print(f"wrote {out}")
    assert (folder / "app.py").read_text() == BASE  # nothing written: the merge waits for Apply
    return 0


if __name__ == "__main__":
    sys.exit(main())
