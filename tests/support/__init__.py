"""Test support: the loopback provider emulator, fixture locations, config helpers."""
