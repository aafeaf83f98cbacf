"""Who is asking and whose keys pay: the org tree (tenants, teams, accounts, projects —
`accounts.py`), tenant and account credentials encrypted at rest (`credentials.py`), and the HTTP
server's API tokens (`tokens.py`). Below both the search dispatcher and the LLM call path, which
both use it."""
