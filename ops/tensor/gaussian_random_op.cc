// placeholder: gaussian_random
