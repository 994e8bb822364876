"""Dispatch variants, one file each; every module registers itself at its bottom."""
