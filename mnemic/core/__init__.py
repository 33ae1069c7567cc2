"""mnemic's framework-free core: records, the Chroma store, embeddings, recall and the audit trail."""
