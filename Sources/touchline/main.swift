print("touchline")
