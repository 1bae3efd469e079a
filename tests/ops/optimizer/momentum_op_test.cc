// placeholder: momentum tests
