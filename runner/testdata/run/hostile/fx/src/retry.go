package src

func Retry() {}
