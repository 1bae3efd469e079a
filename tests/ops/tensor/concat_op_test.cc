// placeholder: concat tests
