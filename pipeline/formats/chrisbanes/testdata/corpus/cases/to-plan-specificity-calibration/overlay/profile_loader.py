def invalid_profile_error(path: str) -> str:
    return f"invalid profile at {path}"
