from calc import add, divide, Accumulator


def test_add():
    assert add(2, 3) == 5


def test_divide():
    assert divide(6, 3) == 2


def test_accumulator():
    acc = Accumulator()
    acc.push(2)
    assert acc.push(3) == 5
