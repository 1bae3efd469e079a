// placeholder: sum tests
