"""Which model and whose key, before any call (seed 002 §3, §7, §8).

aliases  a model spec → `Resolution` (wire type, provider instance, wire model name)
model    a purpose → a model spec (the preferences cascade)
key      a model → a credential (the credential cascade)
order    which candidates a call tries, in which order (the failover order); `failover.py` runs them
"""
