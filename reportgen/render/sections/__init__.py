"""The report's sections, one module each: each puts one part of the judgement in words."""
