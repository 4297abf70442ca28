# Included first, before `configfile:`: the package on the path, and the YAML of the default
# config file and of each --configfile checked, so that a syntax error, a key given twice or an
# alias bomb is one line naming its file and line before any of it is used (Snakemake's own
# message names neither, a duplicated key would be dropped silently, and expanding an alias
# bomb never ends).
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
_config_files = [DEFAULT_CONFIG] if Path(DEFAULT_CONFIG).exists() else []
for _path in _config_files + list(workflow.overwrite_configfiles):
    try:
        load_yaml(_path, "config file")
    except NumasweepError as exc:
        raise WorkflowError(str(exc)) from None
