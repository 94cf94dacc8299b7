"""placeholder"""

def main(argv: list[str]) -> int:
    raise SystemExit("not yet")
