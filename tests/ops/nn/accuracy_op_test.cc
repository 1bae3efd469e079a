// placeholder: accuracy tests
