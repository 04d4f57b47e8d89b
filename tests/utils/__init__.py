"""Tests of tdrl.utils."""
