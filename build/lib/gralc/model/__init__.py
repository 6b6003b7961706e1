"""GraLC."""
