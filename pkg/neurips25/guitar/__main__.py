from .experiments import main

main()
