"""Train DQN with tdrl's tested preset.

python recipes/dqn.py --task TASK --seed 0 --logger {csv,console,tensorboard,wandb} --epochs N
"""

from tdrl.launch import recipe_main

if __name__ == "__main__":
    recipe_main("dqn")
