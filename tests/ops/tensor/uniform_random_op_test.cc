// placeholder: uniform_random tests
