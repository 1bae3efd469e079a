// placeholder: assign
