# oracle/ build fragment (placeholder; the oracle library lands here).
