// placeholder: relu tests
