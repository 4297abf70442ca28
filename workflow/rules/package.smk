# Included first, before `configfile:`: the package on the path, and the default config file's
# YAML checked, so that a syntax error in it is one line naming its line and column (Snakemake's
# own message names neither).
import sys
from pathlib import Path

# The package lives in workflow/: putting it first makes a checkout work without installing
# it, whether workflow/Snakefile started the run or ./Snakefile, which includes it.
PACKAGE_DIR = next(
    str(folder)
    for folder in (Path(workflow.basedir), Path(workflow.basedir) / "workflow")
    if (folder / "numasweep").is_dir()
)
sys.path.insert(0, PACKAGE_DIR)

from numasweep.core.errors import NumasweepError  # noqa: E402
from numasweep.core.io import load_yaml  # noqa: E402

DEFAULT_CONFIG = "config/config.yaml"
if Path(DEFAULT_CONFIG).exists():
    try:
        load_yaml(DEFAULT_CONFIG, "config file")
    except NumasweepError as exc:
        raise WorkflowError(str(exc)) from None
