"""The old name of ``recipes/classic_sac.py`` (SAC on Pendulum-v1), kept for existing commands.

python recipes/sac.py --task Pendulum-v1 --seed 0     # same as recipes/classic_sac.py
"""

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    # recipes draw no learning curve (`tdrl plot RUN_DIR` does): --no-plot changes nothing
    sys.argv = [arg for arg in sys.argv if arg != "--no-plot"]
    runpy.run_path(str(Path(__file__).with_name("classic_sac.py")), run_name="__main__")
