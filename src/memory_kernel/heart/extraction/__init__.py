"""Fact extraction from turns (issue 22)."""
