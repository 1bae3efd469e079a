// placeholder: assign tests
