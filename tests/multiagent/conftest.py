"""The multi-agent tests need PettingZoo (``pip install "tdrl[multiagent]"``)."""

import importlib.util

collect_ignore_glob = (
    []
    if importlib.util.find_spec("pettingzoo")
    else ["test_marl.py", "test_pettingzoo_env.py", "test_tictactoe.py"]
)
