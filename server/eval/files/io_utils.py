import json


def read_numbers(path):
    with open(path) as f:
        return [float(line) for line in f if line.strip()]


def write_report(path, numbers):
    def fmt(n):
        return f"{n:.2f}"

    with open(path, "w") as f:
        json.dump([fmt(n) for n in numbers], f)
