podplan list profiles
