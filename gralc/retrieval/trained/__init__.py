"""The trained model's serving stack: what its score reads of each chunk (chunk table, concept
match, token vectors or codes), the first stage's candidates, and the two-stage search."""
