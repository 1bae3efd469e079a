// placeholder: uniform_random
