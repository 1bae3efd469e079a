// placeholder: sqrt tests
