def missing_manifest_error(path: str) -> str:
    return f"manifest not found: {path}"
