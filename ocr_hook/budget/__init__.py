"""What a run may spend: the shared budget of cost, tokens and wall-clock time (`ledger`: every request
reserves its worst case first and settles what was billed), the price of each model's tokens (`pricing`),
and the 3-bytes-a-token estimate that reservations and compaction use (`tokens`). Pure arithmetic with no
I/O, used by the agent and the commands alike.
"""
