"""Reserved for a later part of mnemic; see the issues."""
