"""Variation operators and the policy that picks among them.

Structural operators (`structural.py`, DEAP) mutate and cross family genomes and repair them to
the family's constraints; LLM operators (`llm/`) edit sources through prompt templates
(`prompts/`). `policy.py` learns which operator to use in which context (REINFORCE).
"""
