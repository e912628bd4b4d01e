"""Bridges from mvpo's estimators and envs to other training frameworks (docs/scaling.md).

Each bridge is an optional extra: importing :mod:`mvpo_train.integrations.verl` needs
``pip install 'mvpo[verl]'``; nothing else in mvpo imports these modules.
"""
