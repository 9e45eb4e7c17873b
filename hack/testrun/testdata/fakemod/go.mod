module example.com/fakemod

go 1.25
