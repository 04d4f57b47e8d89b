"""Tests of tdrl.env."""
