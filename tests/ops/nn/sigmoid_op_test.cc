// placeholder: sigmoid tests
