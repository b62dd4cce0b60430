"""gold_patch.split_patch: files and hunks of git and plain diffs, read by the hunk headers' counts."""
import pytest

from rollflow_engines.roles.inference.gold_patch import split_patch

GIT = """diff --git a/a.py b/a.py
index 1..2 100644
--- a/a.py
+++ b/a.py
@@ -1,3 +1,3 @@
 x = 1
--- a comment that begins with two dashes
+-- it is a removed line, not a header
 y = 2
@@ -10 +10 @@
-z = 3
\\ No newline at end of file
+z = 4
\\ No newline at end of file
diff --git a/new.py b/new.py
new file mode 100644
--- /dev/null
+++ b/new.py
@@ -0,0 +1 @@
+n = 1
diff --git a/old.py b/gone.py
similarity index 100%
rename from old.py
rename to gone.py
"""


def test_git_diff_files_hunks_and_what_str_replace_cannot_say():
    files = split_patch(GIT)
    assert [f.path for f in files] == ["a.py", "new.py", "gone.py"]
    a, new, renamed = files
    assert [(h.before, h.after, h.start) for h in a.hunks] == [
        ("x = 1\n-- a comment that begins with two dashes\ny = 2\n", "x = 1\n-- it is a removed line, not a header\ny = 2\n", 1),
        ("z = 3", "z = 4", 10)]
    assert a.section.startswith("diff --git a/a.py") and a.section.endswith("\\ No newline at end of file\n")
    assert new.hunks is None and renamed.hunks is None  # git apply applies them
    assert new.section.startswith("diff --git a/new.py") and "rename" not in new.section


def test_a_plain_unified_diff_of_two_files():
    plain = "--- a/p.py\n+++ b/p.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n--- q.py\n+++ q.py\n@@ -3 +3,2 @@\n-d\n+e\n+f\n"
    files = split_patch(plain)
    assert [(f.path, [(h.before, h.after) for h in f.hunks]) for f in files] == [("p.py", [("a\nb\n", "a\nc\n")]), ("q.py", [("d\n", "e\nf\n")])]


def test_a_patch_that_names_no_file_is_refused():
    with pytest.raises(ValueError, match="names no file"):
        split_patch("just some text\n")
