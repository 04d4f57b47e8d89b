"""Train SAC with tdrl's tested preset.

python recipes/sac.py --task TASK --seed 0 --logger {csv,console,tensorboard,wandb} --epochs N
"""

from tdrl.launch import recipe_main

if __name__ == "__main__":
    recipe_main("sac")
